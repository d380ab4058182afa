!> Rigid bodies on (R^3 x SO(3))^nb with joints as constraint functions: the
!> one system description every Lie-group integrator consumes (the Lie-group
!> counterpart of model_t; NumPy twin: pyint/models/rigid_bodies.py).
!>
!> Body i: centre of mass x_i, rotation R_i (body -> world), body velocity
!> V_i = (v_i, Omega_i) with  xdot_i = v_i,  Rdot_i = R_i hat(Omega_i);
!> mass m_i, body-frame inertia J_i (3 x 3, symmetric positive definite).
!> The velocity vector V stacks the bodies: V = (v_1, Omega_1, v_2, Omega_2, ...)
!> (6 per body; the paper stacks all v then all Omega, which is only a permutation).
!>
!> Equations of motion:  M Vdot + B(q)^T lam = Q(q, V),  Phi(q) = 0,  with
!>   M = diag(m_1 I, J_1, m_2 I, J_2, ...)  (constant),
!>   Q_i = (m_i g, -Omega_i x J_i Omega_i)  (gravity g, gyroscopic torque),
!>   B(q) V = d/dt Phi,  and the acceleration constraint  B Vdot + (Bdot V) = 0
!>   where bdotv = Bdot V = d/dt (B V) at frozen V.
!>
!> Joints are built from two primitives (jkind):
!>   JOINT_POINT (3 rows): x_a + R_a s_a - x_b - R_b s_b = 0: body points s_a, s_b
!>     coincide (a spherical joint; body b = 0 is the ground, s_b a world point).
!>   JOINT_PERP (1 row): (R_a s_a) . (R_b s_b) = 0: two body-fixed directions stay
!>     perpendicular (body b = 0: s_b a fixed world direction).
!> A revolute joint is POINT + two PERP rows (axis of a perpendicular to two
!> directions of b), a universal joint POINT + one PERP.
!>
!> Derivatives with respect to the configuration are taken in the Lie algebra:
!> a perturbation delta = (dx_1, dth_1, dx_2, dth_2, ...) moves x_i -> x_i + dx_i,
!> R_i -> R_i expm(dth_i); "K = d f/dq" means f(q o delta) = f(q) + K delta + O(|delta|^2).
!>
!> Redundant joints (a planar loop built in space from revolute joints: B of constant rank below
!> its rows) run on an independent subset of the rows, as a vector model does
!> (fortran/core/reduced_model.f90, whose rank test and row choice rigid_drop_redundant_rows
!> shares): the system is then seen through its kept rows (keep, m of them): rigid_phi ...
!> rigid_bdotv_jac and rigid_consistent_acc give those rows, rigid_btl_q takes their multipliers,
!> the *_all items give every row (mall), for the residuals.
!>
!> Encoding (ipar, rpar), shared with pyint.models.rigid_bodies.RigidBodySystem:
!>   ipar = [nb, nj, (kind, a, b) for each joint]
!>   rpar = [g(3), (m, J(3,3) column-major) for each body, (s_a(3), s_b(3)) for each joint]
module pyint_rigid
  use pyint_kinds
  ! rigid_project's failures (info), named in seam/seam.toml
  use pyint_seam, only: PROJECT_SINGULAR, PROJECT_NOT_CONVERGED, PROJECT_INCONSISTENT_POSITION, &
                        PROJECT_INCONSISTENT_VELOCITY
  use pyint_so3, only: hat, cross, expm, tangent
  use pyint_linalg, only: lu_factor, lu_solve, lu_factor_solve, lu_inverse, inf_norm
  use pyint_reduced_model, only: independent_rows, dense_rank
  implicit none
  private
  public :: rigid_system_t, rigid_system_new, JOINT_POINT, JOINT_PERP
  public :: rigid_phi, rigid_bmat, rigid_bdotv, rigid_btl_q, rigid_bw_q, rigid_bdotv_jac
  public :: rigid_force, rigid_force_v, rigid_force_v_block, rigid_mass_matrix, rigid_energy, rigid_consistent_acc
  public :: rigid_orthogonality, rigid_advance, rigid_right_tangent
  public :: rigid_phi_all, rigid_bmat_all, rigid_bdotv_all, rigid_keep_rows, rigid_drop_redundant_rows
  public :: rigid_project, rigid_sample_residuals, PROJECT_SINGULAR, PROJECT_NOT_CONVERGED, &
            PROJECT_INCONSISTENT_POSITION, PROJECT_INCONSISTENT_VELOCITY, PROJECT_TOL_DEPENDENT

  integer, parameter :: JOINT_POINT = 1, JOINT_PERP = 2
  !> rigid_project's relative tolerance of the rows it leaves to follow (the dependent rows of a redundant
  !> system), a start's (pyint/_validate.py CONSISTENCY_TOL), and its Gauss-Newton steps at most (from a
  !> start near the joints, or an O(h^4) interpolant, two or three are taken)
  real(wp), parameter :: PROJECT_TOL_DEPENDENT = 1e-10_wp
  integer, parameter :: PROJECT_MAXIT = 50

  type :: rigid_system_t
    integer :: nb = 0         !< bodies
    integer :: nj = 0         !< joint primitives
    integer :: m = 0          !< constraint rows (the kept ones of a redundant system: keep)
    integer :: mall = 0       !< every joint row (m < mall: a redundant system seen through keep)
    integer :: nv = 0         !< velocity dimension 6 nb
    real(wp) :: grav(3) = 0
    real(wp), allocatable :: mass(:), inertia(:, :, :)
    integer, allocatable :: kind(:), ja(:), jb(:), row(:)   !< row = first constraint row of the joint
    real(wp), allocatable :: sa(:, :), sb(:, :)
    !> the kept rows of a redundant system (rigid_drop_redundant_rows; increasing, in 1..mall),
    !> unallocated when every row is kept: the constraint items rigid_phi ... rigid_bdotv_jac
    !> then have m = size(keep) rows, rigid_btl_q takes their m multipliers (zero on the others),
    !> and the *_all items still give every row (the residuals)
    integer, allocatable :: keep(:)
  end type

contains

  !> Decode (ipar, rpar); ierr = 1 on inconsistent sizes or values.
  subroutine rigid_system_new(ipar, rpar, s, ierr)
    integer, intent(in) :: ipar(:)
    real(wp), intent(in) :: rpar(:)
    type(rigid_system_t), intent(out) :: s
    integer, intent(out) :: ierr
    integer :: i, k, p
    ierr = 1
    if (size(ipar) < 2) return
    s%nb = ipar(1); s%nj = ipar(2)
    if (s%nb < 1 .or. s%nj < 0) return
    if (size(ipar) /= 2 + 3 * s%nj .or. size(rpar) /= 3 + 10 * s%nb + 6 * s%nj) return
    s%nv = 6 * s%nb
    allocate(s%mass(s%nb), s%inertia(3, 3, s%nb), s%kind(s%nj), s%ja(s%nj), s%jb(s%nj), &
             s%row(s%nj + 1), s%sa(3, s%nj), s%sb(3, s%nj))
    s%grav = rpar(1:3)
    p = 3
    do i = 1, s%nb
      s%mass(i) = rpar(p + 1)
      s%inertia(:, :, i) = reshape(rpar(p + 2:p + 10), [3, 3])
      p = p + 10
      if (s%mass(i) <= 0) return
    end do
    s%row(1) = 1
    do k = 1, s%nj
      s%kind(k) = ipar(3 * k)
      s%ja(k) = ipar(3 * k + 1)
      s%jb(k) = ipar(3 * k + 2)
      s%sa(:, k) = rpar(p + 1:p + 3)
      s%sb(:, k) = rpar(p + 4:p + 6)
      p = p + 6
      if (s%ja(k) < 1 .or. s%ja(k) > s%nb .or. s%jb(k) < 0 .or. s%jb(k) > s%nb .or. &
          s%ja(k) == s%jb(k)) return
      select case (s%kind(k))
      case (JOINT_POINT)
        s%row(k + 1) = s%row(k) + 3
      case (JOINT_PERP)
        s%row(k + 1) = s%row(k) + 1
      case default
        return
      end select
    end do
    s%m = s%row(s%nj + 1) - 1
    s%mall = s%m
    ierr = 0
  end subroutine

  ! -- small helpers ----------------------------------------------------------

  !> Offsets of body i's translational and rotational velocity components.
  pure integer function iv(i)
    integer, intent(in) :: i
    iv = 6 * (i - 1)
  end function

  !> d/dOmega of Omega x (Omega x e) = Omega e^T + (Omega . e) I - 2 e Omega^T.
  pure function dcc(om, e) result(d)
    real(wp), intent(in) :: om(3), e(3)
    real(wp) :: d(3, 3)
    integer :: i
    d = spread(om, 2, 3) * spread(e, 1, 3) - 2 * spread(e, 2, 3) * spread(om, 1, 3)
    do i = 1, 3
      d(i, i) = d(i, i) + dot_product(om, e)
    end do
  end function

  !> World vector R_b s_b of joint k's b side (s_b itself when b is the ground).
  pure function world_b(s, k, r) result(w)
    type(rigid_system_t), intent(in) :: s
    integer, intent(in) :: k
    real(wp), intent(in) :: r(3, 3, s%nb)
    real(wp) :: w(3)
    if (s%jb(k) == 0) then
      w = s%sb(:, k)
    else
      w = matmul(r(:, :, s%jb(k)), s%sb(:, k))
    end if
  end function

  ! -- constraint items ---------------------------------------------------------

  !> Phi(q), m rows.
  subroutine phi_all(s, x, r, phi)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: x(3, s%nb), r(3, 3, s%nb)
    real(wp), intent(out) :: phi(s%mall)
    integer :: k, a, b, j
    do k = 1, s%nj
      a = s%ja(k); b = s%jb(k); j = s%row(k)
      select case (s%kind(k))
      case (JOINT_POINT)
        phi(j:j + 2) = x(:, a) + matmul(r(:, :, a), s%sa(:, k)) - world_b(s, k, r)
        if (b > 0) phi(j:j + 2) = phi(j:j + 2) - x(:, b)
      case (JOINT_PERP)
        phi(j) = dot_product(matmul(r(:, :, a), s%sa(:, k)), world_b(s, k, r))
      end select
    end do
  end subroutine

  !> B(q) (m x nv) with B V = d/dt Phi.
  subroutine bmat_all(s, r, bm)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: r(3, 3, s%nb)
    real(wp), intent(out) :: bm(s%mall, s%nv)
    integer :: k, a, b, j, i
    real(wp) :: wa(3), wb(3)
    bm = 0
    do k = 1, s%nj
      a = s%ja(k); b = s%jb(k); j = s%row(k)
      select case (s%kind(k))
      case (JOINT_POINT)
        do i = 1, 3
          bm(j + i - 1, iv(a) + i) = 1
        end do
        bm(j:j + 2, iv(a) + 4:iv(a) + 6) = -matmul(r(:, :, a), hat(s%sa(:, k)))
        if (b > 0) then
          do i = 1, 3
            bm(j + i - 1, iv(b) + i) = -1
          end do
          bm(j:j + 2, iv(b) + 4:iv(b) + 6) = matmul(r(:, :, b), hat(s%sb(:, k)))
        end if
      case (JOINT_PERP)
        wa = matmul(r(:, :, a), s%sa(:, k))
        wb = world_b(s, k, r)
        bm(j, iv(a) + 4:iv(a) + 6) = cross(s%sa(:, k), matmul(wb, r(:, :, a)))
        if (b > 0) bm(j, iv(b) + 4:iv(b) + 6) = cross(s%sb(:, k), matmul(wa, r(:, :, b)))
      end select
    end do
  end subroutine

  !> Bdot V = d/dt (B V) at frozen V (the acceleration constraint is B Vdot + Bdot V = 0).
  subroutine bdotv_all(s, r, v, g)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: r(3, 3, s%nb), v(s%nv)
    real(wp), intent(out) :: g(s%mall)
    integer :: k, a, b, j
    real(wp) :: oa(3), ob(3), wa(3), wb(3), da(3), db(3), dda(3), ddb(3)
    do k = 1, s%nj
      a = s%ja(k); b = s%jb(k); j = s%row(k)
      oa = v(iv(a) + 4:iv(a) + 6)
      select case (s%kind(k))
      case (JOINT_POINT)
        g(j:j + 2) = matmul(r(:, :, a), cross(oa, cross(oa, s%sa(:, k))))
        if (b > 0) then
          ob = v(iv(b) + 4:iv(b) + 6)
          g(j:j + 2) = g(j:j + 2) - matmul(r(:, :, b), cross(ob, cross(ob, s%sb(:, k))))
        end if
      case (JOINT_PERP)
        call perp_vectors(s, k, r, v, wa, wb, da, db, dda, ddb)
        g(j) = dot_product(dda, wb) + 2 * dot_product(da, db) + dot_product(wa, ddb)
      end select
    end do
  end subroutine

  !> World vectors of a PERP joint: a = R_a s_a, b, their rates and second rates at frozen Omega.
  pure subroutine perp_vectors(s, k, r, v, wa, wb, da, db, dda, ddb)
    type(rigid_system_t), intent(in) :: s
    integer, intent(in) :: k
    real(wp), intent(in) :: r(3, 3, s%nb), v(s%nv)
    real(wp), intent(out) :: wa(3), wb(3), da(3), db(3), dda(3), ddb(3)
    real(wp) :: oa(3), ob(3)
    integer :: a, b
    a = s%ja(k); b = s%jb(k)
    oa = v(iv(a) + 4:iv(a) + 6)
    wa = matmul(r(:, :, a), s%sa(:, k))
    da = matmul(r(:, :, a), cross(oa, s%sa(:, k)))
    dda = matmul(r(:, :, a), cross(oa, cross(oa, s%sa(:, k))))
    if (b > 0) then
      ob = v(iv(b) + 4:iv(b) + 6)
      wb = matmul(r(:, :, b), s%sb(:, k))
      db = matmul(r(:, :, b), cross(ob, s%sb(:, k)))
      ddb = matmul(r(:, :, b), cross(ob, cross(ob, s%sb(:, k))))
    else
      wb = s%sb(:, k); db = 0; ddb = 0
    end if
  end subroutine

  !> K = d(B(q)^T lam)/dq (nv x nv).
  subroutine btl_q_all(s, r, lam, kq)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: r(3, 3, s%nb), lam(s%mall)
    real(wp), intent(out) :: kq(s%nv, s%nv)
    integer :: k, a, b, j
    real(wp) :: wa(3), wb(3), ra(3), rb(3)
    kq = 0
    do k = 1, s%nj
      a = s%ja(k); b = s%jb(k); j = s%row(k)
      select case (s%kind(k))
      case (JOINT_POINT)
        ! torque_a = s_a x (R_a^T lam), torque_b = -s_b x (R_b^T lam)
        associate (ka => kq(iv(a) + 4:iv(a) + 6, iv(a) + 4:iv(a) + 6))
          ka = ka + matmul(hat(s%sa(:, k)), hat(matmul(lam(j:j + 2), r(:, :, a))))
        end associate
        if (b > 0) then
          associate (kb => kq(iv(b) + 4:iv(b) + 6, iv(b) + 4:iv(b) + 6))
            kb = kb - matmul(hat(s%sb(:, k)), hat(matmul(lam(j:j + 2), r(:, :, b))))
          end associate
        end if
      case (JOINT_PERP)
        ! torque_a = lam s_a x (R_a^T b), torque_b = lam s_b x (R_b^T a)
        wa = matmul(r(:, :, a), s%sa(:, k))
        wb = world_b(s, k, r)
        ra = matmul(wb, r(:, :, a))
        associate (kaa => kq(iv(a) + 4:iv(a) + 6, iv(a) + 4:iv(a) + 6))
          kaa = kaa + lam(j) * matmul(hat(s%sa(:, k)), hat(ra))
        end associate
        if (b > 0) then
          rb = matmul(wa, r(:, :, b))
          associate (kbb => kq(iv(b) + 4:iv(b) + 6, iv(b) + 4:iv(b) + 6), &
                     kab => kq(iv(a) + 4:iv(a) + 6, iv(b) + 4:iv(b) + 6), &
                     kba => kq(iv(b) + 4:iv(b) + 6, iv(a) + 4:iv(a) + 6))
            kbb = kbb + lam(j) * matmul(hat(s%sb(:, k)), hat(rb))
            kab = kab - lam(j) * matmul(matmul(hat(s%sa(:, k)), matmul(transpose(r(:, :, a)), &
                  r(:, :, b))), hat(s%sb(:, k)))
            kba = kba - lam(j) * matmul(matmul(hat(s%sb(:, k)), matmul(transpose(r(:, :, b)), &
                  r(:, :, a))), hat(s%sa(:, k)))
          end associate
        end if
      end select
    end do
  end subroutine

  !> K = d(B(q) w)/dq (m x nv) for a fixed vector w (nv).
  subroutine bw_q_all(s, r, w, kq)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: r(3, 3, s%nb), w(s%nv)
    real(wp), intent(out) :: kq(s%mall, s%nv)
    integer :: k, a, b, j
    real(wp) :: wa(3), wb(3), ra(3), rb(3), oa(3), ob(3)
    real(wp) :: rab(3, 3)
    kq = 0
    do k = 1, s%nj
      a = s%ja(k); b = s%jb(k); j = s%row(k)
      oa = w(iv(a) + 4:iv(a) + 6)
      select case (s%kind(k))
      case (JOINT_POINT)
        kq(j:j + 2, iv(a) + 4:iv(a) + 6) = matmul(r(:, :, a), hat(cross(s%sa(:, k), oa)))
        if (b > 0) then
          ob = w(iv(b) + 4:iv(b) + 6)
          kq(j:j + 2, iv(b) + 4:iv(b) + 6) = -matmul(r(:, :, b), hat(cross(s%sb(:, k), ob)))
        end if
      case (JOINT_PERP)
        ! B w = p_a . w_a + p_b . w_b,  p_a = s_a x R_a^T b,  p_b = s_b x R_b^T a
        wa = matmul(r(:, :, a), s%sa(:, k))
        wb = world_b(s, k, r)
        ra = matmul(wb, r(:, :, a))
        ! d p_a/d th_a = hat(s_a) hat(R_a^T b):  w_a^T of it
        kq(j, iv(a) + 4:iv(a) + 6) = matmul(oa, matmul(hat(s%sa(:, k)), hat(ra)))
        if (b > 0) then
          ob = w(iv(b) + 4:iv(b) + 6)
          rb = matmul(wa, r(:, :, b))
          rab = matmul(transpose(r(:, :, a)), r(:, :, b))
          kq(j, iv(b) + 4:iv(b) + 6) = matmul(ob, matmul(hat(s%sb(:, k)), hat(rb))) &
              - matmul(oa, matmul(matmul(hat(s%sa(:, k)), rab), hat(s%sb(:, k))))
          kq(j, iv(a) + 4:iv(a) + 6) = kq(j, iv(a) + 4:iv(a) + 6) &
              - matmul(ob, matmul(matmul(hat(s%sb(:, k)), transpose(rab)), hat(s%sa(:, k))))
        end if
      end select
    end do
  end subroutine

  !> kq = d(Bdot V)/dq and kv = d(Bdot V)/dV (m x nv each).
  subroutine bdotv_jac_all(s, r, v, kq, kv)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: r(3, 3, s%nb), v(s%nv)
    real(wp), intent(out) :: kq(s%mall, s%nv), kv(s%mall, s%nv)
    integer :: k, a, b, j
    real(wp) :: oa(3), ob(3), wa(3), wb(3), da(3), db(3), dda(3), ddb(3)
    real(wp) :: ta(3), tb(3), dta(3), dtb(3), ddta(3), ddtb(3)
    kq = 0; kv = 0
    do k = 1, s%nj
      a = s%ja(k); b = s%jb(k); j = s%row(k)
      oa = v(iv(a) + 4:iv(a) + 6)
      select case (s%kind(k))
      case (JOINT_POINT)
        ! R_a Om_a x (Om_a x s_a) - R_b Om_b x (Om_b x s_b)
        kq(j:j + 2, iv(a) + 4:iv(a) + 6) = -matmul(r(:, :, a), hat(cross(oa, cross(oa, s%sa(:, k)))))
        kv(j:j + 2, iv(a) + 4:iv(a) + 6) = matmul(r(:, :, a), dcc(oa, s%sa(:, k)))
        if (b > 0) then
          ob = v(iv(b) + 4:iv(b) + 6)
          kq(j:j + 2, iv(b) + 4:iv(b) + 6) = matmul(r(:, :, b), hat(cross(ob, cross(ob, s%sb(:, k)))))
          kv(j:j + 2, iv(b) + 4:iv(b) + 6) = -matmul(r(:, :, b), dcc(ob, s%sb(:, k)))
        end if
      case (JOINT_PERP)
        ! g = dda . b + 2 da . db + a . ddb, every world vector R_a w moves by -R_a hat(w) th_a
        call perp_vectors(s, k, r, v, wa, wb, da, db, dda, ddb)
        ta = matmul(wb, r(:, :, a)); dta = matmul(db, r(:, :, a)); ddta = matmul(ddb, r(:, :, a))
        kq(j, iv(a) + 4:iv(a) + 6) = cross(cross(oa, cross(oa, s%sa(:, k))), ta) &
            + 2 * cross(cross(oa, s%sa(:, k)), dta) + cross(s%sa(:, k), ddta)
        kv(j, iv(a) + 4:iv(a) + 6) = matmul(ta, dcc(oa, s%sa(:, k))) &
            - 2 * matmul(dta, hat(s%sa(:, k)))
        if (b > 0) then
          ob = v(iv(b) + 4:iv(b) + 6)
          tb = matmul(wa, r(:, :, b)); dtb = matmul(da, r(:, :, b)); ddtb = matmul(dda, r(:, :, b))
          kq(j, iv(b) + 4:iv(b) + 6) = cross(cross(ob, cross(ob, s%sb(:, k))), tb) &
              + 2 * cross(cross(ob, s%sb(:, k)), dtb) + cross(s%sb(:, k), ddtb)
          kv(j, iv(b) + 4:iv(b) + 6) = matmul(tb, dcc(ob, s%sb(:, k))) &
              - 2 * matmul(dtb, hat(s%sb(:, k)))
        end if
      end select
    end do
  end subroutine

  ! -- constraint items of the kept rows (a redundant system: keep) -----------------------

  !> Phi(q), the m kept rows.
  subroutine rigid_phi(s, x, r, phi)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: x(3, s%nb), r(3, 3, s%nb)
    real(wp), intent(out) :: phi(s%m)
    real(wp), allocatable :: f(:)
    if (.not. allocated(s%keep)) then
      call phi_all(s, x, r, phi)
      return
    end if
    allocate(f(s%mall))
    call phi_all(s, x, r, f)
    phi = f(s%keep)
  end subroutine

  !> B(q) (m x nv), the kept rows.
  subroutine rigid_bmat(s, r, bm)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: r(3, 3, s%nb)
    real(wp), intent(out) :: bm(s%m, s%nv)
    real(wp), allocatable :: f(:, :)
    if (.not. allocated(s%keep)) then
      call bmat_all(s, r, bm)
      return
    end if
    allocate(f(s%mall, s%nv))
    call bmat_all(s, r, f)
    bm = f(s%keep, :)
  end subroutine

  !> Bdot V, the kept rows.
  subroutine rigid_bdotv(s, r, v, g)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: r(3, 3, s%nb), v(s%nv)
    real(wp), intent(out) :: g(s%m)
    real(wp), allocatable :: f(:)
    if (.not. allocated(s%keep)) then
      call bdotv_all(s, r, v, g)
      return
    end if
    allocate(f(s%mall))
    call bdotv_all(s, r, v, f)
    g = f(s%keep)
  end subroutine

  !> d(B(q)^T lam)/dq for the multipliers lam of the kept rows.
  subroutine rigid_btl_q(s, r, lam, kq)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: r(3, 3, s%nb), lam(s%m)
    real(wp), intent(out) :: kq(s%nv, s%nv)
    real(wp), allocatable :: f(:)
    if (.not. allocated(s%keep)) then
      call btl_q_all(s, r, lam, kq)
      return
    end if
    allocate(f(s%mall))
    f = 0
    f(s%keep) = lam
    call btl_q_all(s, r, f, kq)
  end subroutine

  !> d(B(q) w)/dq, the kept rows.
  subroutine rigid_bw_q(s, r, w, kq)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: r(3, 3, s%nb), w(s%nv)
    real(wp), intent(out) :: kq(s%m, s%nv)
    real(wp), allocatable :: f(:, :)
    if (.not. allocated(s%keep)) then
      call bw_q_all(s, r, w, kq)
      return
    end if
    allocate(f(s%mall, s%nv))
    call bw_q_all(s, r, w, f)
    kq = f(s%keep, :)
  end subroutine

  !> d(Bdot V)/dq and d(Bdot V)/dV, the kept rows.
  subroutine rigid_bdotv_jac(s, r, v, kq, kv)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: r(3, 3, s%nb), v(s%nv)
    real(wp), intent(out) :: kq(s%m, s%nv), kv(s%m, s%nv)
    real(wp), allocatable :: fq(:, :), fv(:, :)
    if (.not. allocated(s%keep)) then
      call bdotv_jac_all(s, r, v, kq, kv)
      return
    end if
    allocate(fq(s%mall, s%nv), fv(s%mall, s%nv))
    call bdotv_jac_all(s, r, v, fq, fv)
    kq = fq(s%keep, :)
    kv = fv(s%keep, :)
  end subroutine

  !> Phi, B and Bdot V over every joint row (mall), whatever rows are kept: the residuals.
  subroutine rigid_phi_all(s, x, r, phi)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: x(3, s%nb), r(3, 3, s%nb)
    real(wp), intent(out) :: phi(s%mall)
    call phi_all(s, x, r, phi)
  end subroutine

  subroutine rigid_bmat_all(s, r, bm)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: r(3, 3, s%nb)
    real(wp), intent(out) :: bm(s%mall, s%nv)
    call bmat_all(s, r, bm)
  end subroutine

  subroutine rigid_bdotv_all(s, r, v, g)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: r(3, 3, s%nb), v(s%nv)
    real(wp), intent(out) :: g(s%mall)
    call bdotv_all(s, r, v, g)
  end subroutine

  !> See the system through its joint rows `rows` (increasing, in 1..mall): m = size(rows).
  subroutine rigid_keep_rows(s, rows)
    type(rigid_system_t), intent(inout) :: s
    integer, intent(in) :: rows(:)
    s%keep = rows
    s%m = size(rows)
  end subroutine

  !> The start of a redundant rigid system, as fortran/core/reduced_model.f90 drop_redundant_rows
  !> is a vector model's (the same rank test and thresholds: independent_rows, SIGMA_TOL): when B
  !> at (x, R) has rank r below its mall rows, the system is seen through the r independent rows
  !> the column-pivoted QR of B^T picks (rigid_keep_rows).  Redundant or singular: the rank is
  !> measured again at a nearby configuration on the kept rows' manifold, (x, R) moved on the
  !> group by 1e-3 max(1, max|x|) along a fixed direction orthogonal to the kept rows, then
  !> projected back onto their Phi = 0 (Gauss-Newton on the group); a larger rank there is a
  !> singular configuration (the mechanism's mobility jumps at q0), refused.  rank0, rank1: the
  !> ranks at q0 and nearby (rank1 = rank0 when not measured).  info: 0, or
  !> STATUS_RANK_DEFICIENT (a singular configuration, or no independent row at all).
  subroutine rigid_drop_redundant_rows(s, x, r, info, rank0, rank1)
    type(rigid_system_t), intent(inout) :: s
    real(wp), intent(in) :: x(3, s%nb), r(3, 3, s%nb)
    integer, intent(out) :: info, rank0, rank1
    real(wp), allocatable :: bm(:, :), bk(:, :), g(:, :), phi(:), d(:)
    integer, allocatable :: rows(:), ipiv(:)
    real(wp) :: x1(3, s%nb), r1(3, 3, s%nb), x2(3, s%nb), r2(3, 3, s%nb), scale
    integer :: it, k
    info = 0
    rank0 = s%mall; rank1 = s%mall
    if (s%mall == 0) return
    allocate(bm(s%mall, s%nv), d(s%nv))
    call bmat_all(s, r, bm)
    call independent_rows(bm, rows, rank0, d)
    rank1 = rank0
    if (rank0 == s%mall) return
    info = STATUS_RANK_DEFICIENT
    if (rank0 == 0) return
    call rigid_keep_rows(s, rows)
    if (rank0 < s%nv) then
      scale = max(1.0_wp, maxval(abs(x)))
      call rigid_advance(s, x, r, 1e-3_wp * scale * d, x1, r1)
      allocate(bk(s%m, s%nv), g(s%m, s%m), phi(s%m), ipiv(s%m))
      do it = 1, 30                                    ! back onto the kept rows' Phi = 0
        call rigid_phi(s, x1, r1, phi)
        if (maxval(abs(phi)) <= 1e-14_wp * scale) exit
        call rigid_bmat(s, r1, bk)
        g = matmul(bk, transpose(bk))
        call lu_factor(g, ipiv, k)
        if (k /= 0) return
        call lu_solve(g, ipiv, phi)
        call rigid_advance(s, x1, r1, -matmul(phi, bk), x2, r2)
        x1 = x2; r1 = r2
      end do
      call bmat_all(s, r1, bm)
      rank1 = dense_rank(bm)
      if (rank1 /= rank0) return                      ! a singular configuration, not redundancy
    end if
    info = 0
  end subroutine

  !> (x, R) projected onto Phi = 0 and V onto B V = 0, both M-orthogonally, through the kept rows
  !> (s%keep; every row when unallocated), the dependent rows of a redundant system following:
  !>   q <- q o exp(-M^-1 B^T (B M^-1 B^T)^-1 Phi)  (Gauss-Newton on the group, at most PROJECT_MAXIT steps,
  !>        until max|Phi| of the kept rows <= 1e-14 max(1, max|x|); tol_q = 0: one step at least),
  !>   V <- V - M^-1 B^T (B M^-1 B^T)^-1 B V  (B at the projected R),
  !> each only where its level (max|Phi|, max|B V| over every row) exceeds tol_q resp. tol_v, and then
  !> checked on every row against max(tol_q, tol max(1, max|x|)) resp. max(tol_v, tol max(1, max|V|))
  !> (tol = PROJECT_TOL_DEPENDENT, the dependent rows'; the scales of the state as given).
  !> The projection of Hairer, Lubich, Wanner, Geometric Numerical Integration, IV.4 (orthogonal
  !> projection onto the manifold, here in the metric of M) on the group (GNI IV.8).  info: 0;
  !> PROJECT_SINGULAR; PROJECT_NOT_CONVERGED; PROJECT_INCONSISTENT_POSITION / _VELOCITY (the state
  !> stays as reached).
  subroutine rigid_project(s, x, r, v, tol_q, tol_v, info)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(inout) :: x(3, s%nb), r(3, 3, s%nb), v(s%nv)
    real(wp), intent(in) :: tol_q, tol_v
    integer, intent(out) :: info
    real(wp) :: minv(s%nv, s%nv), mm(s%nv, s%nv), phi(s%mall), bm(s%mall, s%nv), corr(s%nv), &
                x1(3, s%nb), r1(3, 3, s%nb), scale
    integer :: ipiv(s%nv), it
    logical :: converged
    info = 0
    if (s%mall == 0) return
    call rigid_mass_matrix(s, mm)
    call lu_inverse(mm, ipiv, minv, info)
    if (info /= 0) then
      info = PROJECT_SINGULAR
      return
    end if
    scale = max(1.0_wp, maxval(abs(x)))
    call phi_all(s, x, r, phi)
    if (inf_norm(phi) > tol_q) then
      converged = .false.
      do it = 0, PROJECT_MAXIT - 1
        call phi_all(s, x, r, phi)
        if (inf_norm(kept(phi)) <= 1e-14_wp * scale .and. (it > 0 .or. tol_q > 0)) then
          converged = .true.
          exit
        end if
        call correction(r, kept(phi), corr, info)
        if (info /= 0) return
        call rigid_advance(s, x, r, -corr, x1, r1)
        x = x1
        r = r1
      end do
      if (.not. converged) then
        info = PROJECT_NOT_CONVERGED
        return
      end if
      call phi_all(s, x, r, phi)
      if (inf_norm(phi) > max(tol_q, PROJECT_TOL_DEPENDENT * scale)) then
        info = PROJECT_INCONSISTENT_POSITION
        return
      end if
    end if
    scale = max(1.0_wp, maxval(abs(v)))
    call bmat_all(s, r, bm)
    phi = matmul(bm, v)
    if (inf_norm(phi) > tol_v) then
      call correction(r, kept(phi), corr, info)
      if (info /= 0) return
      v = v - corr
      phi = matmul(bm, v)
      if (inf_norm(phi) > max(tol_v, PROJECT_TOL_DEPENDENT * scale)) info = PROJECT_INCONSISTENT_VELOCITY
    end if

  contains

    !> The kept rows of a vector over every row.
    function kept(f) result(fk)
      real(wp), intent(in) :: f(:)
      real(wp) :: fk(s%m)
      if (allocated(s%keep)) then
        fk = f(s%keep)
      else
        fk = f
      end if
    end function

    !> corr = M^-1 B^T (B M^-1 B^T)^-1 res, B the kept rows at rr.
    subroutine correction(rr, res, corr, info)
      real(wp), intent(in) :: rr(3, 3, s%nb), res(s%m)
      real(wp), intent(out) :: corr(s%nv)
      integer, intent(out) :: info
      real(wp) :: bk(s%m, s%nv), mbt(s%nv, s%m), g(s%m, s%m), y(s%m)
      integer :: gpiv(s%m)
      call rigid_bmat(s, rr, bk)
      mbt = matmul(minv, transpose(bk))
      g = matmul(bk, mbt)
      y = res
      call lu_factor_solve(g, gpiv, y, info)
      if (info /= 0) then
        info = PROJECT_SINGULAR
        return
      end if
      corr = matmul(mbt, y)
    end subroutine

  end subroutine

  !> The residuals of a sample over every joint row (a redundant system's dropped ones too):
  !> res = [|Phi|, |B V|, |B A + Bdot V| (max norms), max_i |R_i^T R_i - I|_F], and the energy.
  subroutine rigid_sample_residuals(s, x, r, v, a, res, energy)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: x(3, s%nb), r(3, 3, s%nb), v(s%nv), a(s%nv)
    real(wp), intent(out) :: res(4), energy
    real(wp) :: phi(s%mall), bm(s%mall, s%nv), g(s%mall)
    call phi_all(s, x, r, phi)
    call bmat_all(s, r, bm)
    call bdotv_all(s, r, v, g)
    res(1) = inf_norm(phi)
    res(2) = inf_norm(matmul(bm, v))
    res(3) = inf_norm(matmul(bm, a) + g)
    res(4) = rigid_orthogonality(s, r)
    energy = rigid_energy(s, x, v)
  end subroutine

  ! -- dynamics -----------------------------------------------------------------

  !> Q(V) = (m_i g, -Omega_i x J_i Omega_i) for every body.
  subroutine rigid_force(s, v, q)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: v(s%nv)
    real(wp), intent(out) :: q(s%nv)
    integer :: i, o
    do i = 1, s%nb
      o = iv(i)
      q(o + 1:o + 3) = s%mass(i) * s%grav
      q(o + 4:o + 6) = -cross(v(o + 4:o + 6), matmul(s%inertia(:, :, i), v(o + 4:o + 6)))
    end do
  end subroutine

  !> dQ/dV (nv x nv): blocks hat(J Omega) - hat(Omega) J (rigid_force_v_block).
  subroutine rigid_force_v(s, v, qv)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: v(s%nv)
    real(wp), intent(out) :: qv(s%nv, s%nv)
    integer :: i, o
    qv = 0
    do i = 1, s%nb
      o = iv(i)
      qv(o + 4:o + 6, o + 4:o + 6) = rigid_force_v_block(s, v, i)
    end do
  end subroutine

  !> Body i's block of dQ/dV, d(-Omega x J Omega)/dOmega = hat(J Omega) - hat(Omega) J (its only
  !> nonzero one: the rotational rows and columns of body i).
  pure function rigid_force_v_block(s, v, i) result(k)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: v(s%nv)
    integer, intent(in) :: i
    real(wp) :: k(3, 3)
    associate (om => v(iv(i) + 4:iv(i) + 6), jj => s%inertia(:, :, i))
      k = hat(matmul(jj, om)) - matmul(hat(om), jj)
    end associate
  end function

  subroutine rigid_mass_matrix(s, mm)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(out) :: mm(s%nv, s%nv)
    integer :: i, o, l
    mm = 0
    do i = 1, s%nb
      o = iv(i)
      do l = 1, 3
        mm(o + l, o + l) = s%mass(i)
      end do
      mm(o + 4:o + 6, o + 4:o + 6) = s%inertia(:, :, i)
    end do
  end subroutine

  !> Total energy sum(m |v|^2/2 + Omega.J Omega/2 - m g.x).
  pure real(wp) function rigid_energy(s, x, v) result(e)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: x(3, s%nb), v(s%nv)
    integer :: i, o
    e = 0
    do i = 1, s%nb
      o = iv(i)
      e = e + 0.5_wp * s%mass(i) * dot_product(v(o + 1:o + 3), v(o + 1:o + 3)) &
            + 0.5_wp * dot_product(v(o + 4:o + 6), matmul(s%inertia(:, :, i), v(o + 4:o + 6))) &
            - s%mass(i) * dot_product(s%grav, x(:, i))
    end do
  end function

  !> max_i |R_i^T R_i - I|_F.
  pure real(wp) function rigid_orthogonality(s, r) result(e)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: r(3, 3, s%nb)
    real(wp) :: d(3, 3)
    integer :: i, l
    e = 0
    do i = 1, s%nb
      d = matmul(transpose(r(:, :, i)), r(:, :, i))
      do l = 1, 3
        d(l, l) = d(l, l) - 1
      end do
      e = max(e, sqrt(sum(d * d)))
    end do
  end function

  !> The configuration moved by psi (nv: (dx_i, dth_i) per body): x1 = x + dx, R1 = R expm(dth).
  subroutine rigid_advance(s, x, r, psi, x1, r1)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: x(3, s%nb), r(3, 3, s%nb), psi(s%nv)
    real(wp), intent(out) :: x1(3, s%nb), r1(3, 3, s%nb)
    integer :: i
    do i = 1, s%nb
      x1(:, i) = x(:, i) + psi(iv(i) + 1:iv(i) + 3)
      r1(:, :, i) = matmul(r(:, :, i), expm(psi(iv(i) + 4:iv(i) + 6)))
    end do
  end subroutine

  !> K <- K diag(I, T(dth_1), I, T(dth_2), ...): turns a derivative with respect to the
  !> configuration into one with respect to psi in  q1 = q o exp(psi)  (chain rule).
  subroutine rigid_right_tangent(s, psi, k)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: psi(s%nv)
    real(wp), intent(inout) :: k(:, :)
    integer :: i, o
    do i = 1, s%nb
      o = iv(i) + 3
      k(:, o + 1:o + 3) = matmul(k(:, o + 1:o + 3), tangent(psi(o + 1:o + 3)))
    end do
  end subroutine

  !> Consistent acceleration and multipliers: [M B^T; B 0] [A; lam] = [Q; -Bdot V].
  subroutine rigid_consistent_acc(s, r, v, acc, lam, info)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: r(3, 3, s%nb), v(s%nv)
    real(wp), intent(out) :: acc(s%nv), lam(s%m)
    integer, intent(out) :: info
    real(wp) :: kkt(s%nv + s%m, s%nv + s%m), rhs(s%nv + s%m), bm(s%m, s%nv)
    integer :: ipiv(s%nv + s%m), n
    n = s%nv
    kkt = 0
    call rigid_mass_matrix(s, kkt(1:n, 1:n))
    call rigid_bmat(s, r, bm)
    kkt(1:n, n + 1:) = transpose(bm)
    kkt(n + 1:, 1:n) = bm
    call rigid_force(s, v, rhs(1:n))
    call rigid_bdotv(s, r, v, rhs(n + 1:))
    rhs(n + 1:) = -rhs(n + 1:)
    call lu_factor_solve(kkt, ipiv, rhs, info)
    if (info /= 0) return
    acc = rhs(1:n)
    lam = rhs(n + 1:)
  end subroutine

end module pyint_rigid
