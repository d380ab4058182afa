!> The base of the Lie-group steppers: rigid bodies on (R^3 x SO(3))^nb
!> (fortran/core/rigid_body.f90) as a stepper of the one driver
!> (fortran/core/driver.f90), which owns the loop, sampling, the per-step maxima,
!> status, NaN checks and batches for them as for every method.
!>
!> The driver's state: q = (x_1, R_1 row-major, x_2, R_2, ...) (12 per body: the
!> layout of pyint's RigidBodySystem.pack and LieResult.q), v = V (6 per body),
!> a = the method's acceleration, lam the multipliers (m).  The system comes from
!> (ipar, rpar) of the driver's model block (RigidBodySystem.fortran_params; the
!> other entries of the block are not used).  Residuals per sample (nres = 4):
!> |Phi|, |B V|, |B A + Bdot V| (max norms) and max_i |R_i^T R_i - I|_F; the energy
!> sum(m |v|^2/2 + Omega.J Omega/2 - m g.x).
module pyint_rigid_stepper
  use pyint_kinds
  use pyint_driver, only: stepper_t, state_t
  use pyint_callback_model, only: usercb_i
  use pyint_linalg, only: inf_norm
  use pyint_rigid, only: rigid_system_t, rigid_system_new, rigid_phi, rigid_bmat, rigid_bdotv, &
                         rigid_orthogonality, rigid_energy
  implicit none
  private
  public :: rigid_stepper_t, rigid_unpack, rigid_pack, NRES_RIGID

  integer, parameter :: NRES_RIGID = 4

  type, abstract, extends(stepper_t) :: rigid_stepper_t
    type(rigid_system_t) :: sys
  contains
    procedure :: setup => rigid_setup
    procedure :: residuals => rigid_point_residuals
  end type

contains

  !> The system from (ipar, rpar); nq = 12 nb, nv = 6 nb, nl = m.  info = STATUS_BAD_INPUT
  !> if (ipar, rpar) is not a valid system.
  subroutine rigid_setup(self, model_id, ipar, rpar, usercb, n, mh, mn, mflags, info)
    class(rigid_stepper_t), intent(inout) :: self
    integer, intent(in) :: model_id, n, mh, mn
    integer, intent(in) :: ipar(:), mflags(:)
    real(wp), intent(in) :: rpar(:)
    procedure(usercb_i) :: usercb
    integer, intent(out) :: info
    call rigid_system_new(ipar, rpar, self%sys, info)
    if (info /= 0) then
      info = STATUS_BAD_INPUT
      return
    end if
    self%nq = 12 * self%sys%nb
    self%nv = self%sys%nv
    self%nl = self%sys%m
    self%nres = NRES_RIGID
  end subroutine

  !> x (3, nb), R (3, 3, nb) of the flat configuration q.
  pure subroutine rigid_unpack(q, x, r)
    real(wp), intent(in) :: q(:)
    real(wp), intent(out) :: x(:, :), r(:, :, :)
    integer :: i, o
    do i = 1, size(x, 2)
      o = 12 * (i - 1)
      x(:, i) = q(o + 1:o + 3)
      r(:, :, i) = transpose(reshape(q(o + 4:o + 12), [3, 3]))
    end do
  end subroutine

  !> The flat configuration q of x (3, nb), R (3, 3, nb).
  pure subroutine rigid_pack(x, r, q)
    real(wp), intent(in) :: x(:, :), r(:, :, :)
    real(wp), intent(out) :: q(:)
    integer :: i, o
    do i = 1, size(x, 2)
      o = 12 * (i - 1)
      q(o + 1:o + 3) = x(:, i)
      q(o + 4:o + 12) = reshape(transpose(r(:, :, i)), [9])
    end do
  end subroutine

  !> res = [|Phi|, |B V|, |B A + Bdot V|, max_i |R_i^T R_i - I|_F] and the energy at s.
  subroutine rigid_point_residuals(self, s, res, energy)
    class(rigid_stepper_t), intent(inout) :: self
    type(state_t), intent(in) :: s
    real(wp), intent(out) :: res(:), energy
    real(wp) :: x(3, self%sys%nb), r(3, 3, self%sys%nb), phi(self%sys%m), bm(self%sys%m, self%sys%nv), &
                g(self%sys%m)
    call rigid_unpack(s%q, x, r)
    call rigid_phi(self%sys, x, r, phi)
    call rigid_bmat(self%sys, r, bm)
    call rigid_bdotv(self%sys, r, s%v, g)
    res(1) = inf_norm(phi)
    res(2) = inf_norm(matmul(bm, s%v))
    res(3) = inf_norm(matmul(bm, s%a) + g)
    res(4) = rigid_orthogonality(self%sys, r)
    energy = rigid_energy(self%sys, x, s%v)
  end subroutine

end module pyint_rigid_stepper
