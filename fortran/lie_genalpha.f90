!> Lie-group generalized-alpha on (R^3 x SO(3))^nb (Arnold, Brüls, Cardona 2015):
!> index 3 (variant 0) and a stabilized index-2 variant (variant 1).
!>
!> One step from (q_n, V_n, Vdot_n, a_n) with the unknown Vdot_{n+1} =: W:
!>   (1 - am) a_{n+1} = (1 - af) W + af Vdot_n - am a_n
!>   V_{n+1}  = V_n + h (1 - gamma) a_n + h gamma a_{n+1}
!>   psi      = h V_n + h^2 (1/2 - beta) a_n + h^2 beta a_{n+1}  [+ beta h^2 B(q_n)^T mu]
!>   q_{n+1}  = q_n o exp(psi):  x + psi_x,  R expm(psi_theta)
!>   M W + B(q_{n+1})^T lam - Q(V_{n+1}) = 0
!>   Phi(q_{n+1}) / (beta h^2) = 0
!>   [variant 1:  B(q_{n+1}) V_{n+1} / (gamma h) = 0]
!> The multiplier mu of the stabilized variant moves q_{n+1} along B(q_n)^T
!> (a GGL-type correction evaluated at the known q_n, so no derivative of B^T mu
!> is needed); it keeps Phi = 0 and B V = 0 together.  alpha parameters from
!> rho_inf as in genalpha.f90 (Chung-Hulbert): the same alpha_params.
!>
!> Newton on z = (W, lam[, mu]) with the exact Jacobian; with c = (1-af)/(1-am),
!> P' = diag(I, T(psi_theta_i)), B1 = B(q_{n+1}), B0 = B(q_n):
!>   [ M - h gamma c Q_V + h^2 beta c (B1^T lam)_q P'   B1^T   beta h^2 (B1^T lam)_q P' B0^T ]
!>   [ c B1 P'                                          0      B1 P' B0^T                     ]
!>   [ c B1 + (h beta c/gamma) (B1 V)_q P'              0      (beta h/gamma) (B1 V)_q P' B0^T ]
!> Termination: the one rule of every implicit kernel, pyint_newton_control
!> (fortran/core/newton_control.f90), in the Lie steppers' one Newton iteration
!> (fortran/core/lie_stepper.f90); groups at ga_measure.
module lie_genalpha
  use pyint_kinds
  use pyint_rigid
  use pyint_alpha, only: alpha_params_t, alpha_params
  use pyint_newton_control, only: maxabs
  use pyint_driver, only: state_t
  use pyint_lie_stepper, only: lie_stepper_t, lie_work_init, lie_pack
  implicit none
  private
  public :: lie_genalpha_stepper_t, LGA_INDEX3, LGA_STAB2

  integer, parameter :: LGA_INDEX3 = 0, LGA_STAB2 = 1

  !> The stepper of the one driver (fortran/core/driver.f90, fortran/core/lie_stepper.f90).
  !> iopt = [variant, maxit], ropt = [rho_inf, tol].  The state's a is Vdot; the auxiliary
  !> vector per sample (a, mu): the algorithmic acceleration and, for variant 1, the
  !> stabilizing multiplier.  stats = [Newton iterations, factorizations, max iterations in
  !> a step].  Its Newton blocks besides the common ones (self%w): B(q_n) (b0), B(q_{n+1}) (b1),
  !> the known part psi0 of the increment, V_{n+1} (v1) and a_{n+1} (a1) at the iterate.
  type, extends(lie_stepper_t) :: lie_genalpha_stepper_t
    type(alpha_params_t) :: p
    integer :: variant = LGA_INDEX3
    real(wp), allocatable :: aalg(:), mu(:)
    real(wp), allocatable :: b0(:, :), b1(:, :), psi0(:), v1(:), a1(:)
  contains
    procedure :: init => lga_init
    procedure :: step => lga_step
    procedure :: aux => lga_aux
    procedure :: newton_eval => ga_eval
    procedure :: newton_measure => ga_measure
  end type

contains

  !> q_{n+1}, V_{n+1}, a_{n+1} at the iterate (w%x1, w%r1, self%v1, self%a1, w%psi).
  subroutine ga_kinematics(self, h, v, vd)
    class(lie_genalpha_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, v(:), vd(:)
    associate (s => self%sys, variant => self%variant, p => self%p, x => self%x, r => self%r, &
               a => self%aalg, w => self%w)
      associate (wd => w%z(1:w%nv))
        self%a1 = ((1 - p%alpha_f) * wd + p%alpha_f * vd - p%alpha_m * a) / (1 - p%alpha_m)
        self%v1 = v + h * (1 - p%gamma) * a + h * p%gamma * self%a1
        w%psi = self%psi0 + h * h * p%beta * self%a1
        if (variant == LGA_STAB2) w%psi = w%psi + p%beta * h * h * matmul(w%z(w%nv + w%m + 1:), self%b0)
      end associate
      call rigid_advance(s, x, r, w%psi, w%x1, w%r1)
    end associate
  end subroutine

  !> Residual and Newton matrix at the iterate w%z; u = V_n, u2 = Vdot_n.
  subroutine ga_eval(self, h, u, u2)
    class(lie_genalpha_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, u(:), u2(:)
    integer :: nv, m
    real(wp) :: c, bh2
    associate (s => self%sys, variant => self%variant, p => self%p, w => self%w, v => u, vd => u2)
      nv = w%nv; m = w%m
      c = p%c
      bh2 = p%beta * h * h
      call ga_kinematics(self, h, v, vd)
      associate (wd => w%z(1:nv), lam => w%z(nv + 1:nv + m))
        call rigid_bmat(s, w%r1, self%b1)
        call rigid_force(s, self%v1, w%qf)
        w%res(1:nv) = matmul(w%mm, wd) + matmul(lam, self%b1) - w%qf
        call rigid_phi(s, w%x1, w%r1, w%res(nv + 1:nv + m))
        w%res(nv + 1:nv + m) = w%res(nv + 1:nv + m) / bh2
        if (variant == LGA_STAB2) w%res(nv + m + 1:) = matmul(self%b1, self%v1) / (p%gamma * h)
        w%jac = 0
        call rigid_force_v(s, self%v1, w%kvv)
        w%jac(1:nv, 1:nv) = w%mm - h * p%gamma * c * w%kvv
        call rigid_btl_q(s, w%r1, lam, w%kvv)
        call rigid_right_tangent(s, w%psi, w%kvv)          ! (B1^T lam)_q P'
        w%jac(1:nv, 1:nv) = w%jac(1:nv, 1:nv) + bh2 * c * w%kvv
        w%jac(1:nv, nv + 1:nv + m) = transpose(self%b1)
        w%kmv = self%b1
        call rigid_right_tangent(s, w%psi, w%kmv)          ! B1 P'
        w%jac(nv + 1:nv + m, 1:nv) = c * w%kmv
        if (variant == LGA_STAB2) then
          w%jac(1:nv, nv + m + 1:) = bh2 * matmul(w%kvv, transpose(self%b0))
          w%jac(nv + 1:nv + m, nv + m + 1:) = matmul(w%kmv, transpose(self%b0))
          call rigid_bw_q(s, w%r1, self%v1, w%kmv)
          call rigid_right_tangent(s, w%psi, w%kmv)        ! (B1 V)_q P'
          w%jac(nv + m + 1:, 1:nv) = c * self%b1 + (h * p%beta * c / p%gamma) * w%kmv
          w%jac(nv + m + 1:, nv + m + 1:) = (p%beta * h / p%gamma) * matmul(w%kmv, transpose(self%b0))
        end if
      end associate
    end associate
  end subroutine

  !> The groups, each in the units of what it changes: W (h |dW| against 1 + |V|), lam
  !> (h |dlam| against 1 + |M V|), mu (beta h^2 |dmu| against 1 + |x|).  The 1/(beta h^2) rows
  !> leave a round-off eps (1 + |x|) / (beta h^2) in W and lam: their floor is what changes
  !> the positions by an ulp.
  subroutine ga_measure(self, h)
    class(lie_genalpha_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h
    integer :: nv, m
    real(wp) :: sv, smv, sx
    associate (p => self%p, x => self%x, w => self%w)
      nv = w%nv; m = w%m
      sv = 1 + maxabs(self%v1)
      smv = 1 + maxabs(matmul(w%mm, self%v1))
      sx = (1 + maxval(abs(x))) / (p%beta * h * h)
      call w%nc%group(w%dz(1:nv), sv / h, max(maxabs(w%z(1:nv)), sx))
      call w%nc%group(w%dz(nv + 1:nv + m), smv / h, smv * sx / sv)
      if (self%variant == LGA_STAB2) call w%nc%group(w%dz(nv + m + 1:), sx, sx)
    end associate
  end subroutine

  !> Vdot and lam at the start from the index-3 system (rigid_consistent_acc); a_0 = Vdot_0.
  subroutine lga_init(self, s, info)
    class(lie_genalpha_stepper_t), intent(inout) :: self
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    if (.not. self%options_fit(nstats=3, niopt=2, nropt=2, info=info)) return
    self%variant = self%iopt(1); self%maxit = self%iopt(2); self%tol = self%ropt(2)
    if (self%variant /= LGA_INDEX3 .and. self%variant /= LGA_STAB2) return
    if (self%ropt(1) < 0 .or. self%ropt(1) > 1) return
    self%naux = self%sys%nv + self%sys%m
    self%p = alpha_params(self%ropt(1))
    associate (nv => self%sys%nv, m => self%sys%m, w => self%w)
      call lie_work_init(w, self%sys, nv + m + merge(m, 0, self%variant == LGA_STAB2))   ! (W, lam[, mu])
      allocate(self%b0(m, nv), self%b1(m, nv), self%psi0(nv), self%v1(nv), self%a1(nv))
    end associate
    allocate(self%mu(self%sys%m))
    call self%lie_start(s, info)
    if (info /= 0) return
    self%aalg = s%a
    self%mu = 0
  end subroutine

  subroutine lga_step(self, h, t1, s, info)
    class(lie_genalpha_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, t1
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    integer :: nv, m
    nv = self%sys%nv; m = self%sys%m
    associate (sys => self%sys, w => self%w, p => self%p, x => self%x, r => self%r, a => self%aalg)
      self%psi0 = h * s%v + h * h * (0.5_wp - p%beta) * a
      if (self%variant == LGA_STAB2) call rigid_bmat(sys, r, self%b0)
      w%z(1:nv) = s%a
      w%z(nv + 1:nv + m) = s%lam
      if (self%variant == LGA_STAB2) w%z(nv + m + 1:) = 0
      call self%newton(h, s%v, s%a, info)
      if (info /= 0) return
      call ga_kinematics(self, h, s%v, s%a)
      x = w%x1; r = w%r1; s%v = self%v1; a = self%a1
      s%a = w%z(1:nv)
      s%lam = w%z(nv + 1:nv + m)
      if (self%variant == LGA_STAB2) self%mu = w%z(nv + m + 1:)
      call lie_pack(x, r, s%q)
    end associate
  end subroutine

  !> (a, mu) per sample.
  subroutine lga_aux(self, s, aux)
    class(lie_genalpha_stepper_t), intent(inout) :: self
    type(state_t), intent(in) :: s
    real(wp), intent(out) :: aux(:)
    aux = [self%aalg, self%mu]
  end subroutine

end module lie_genalpha
